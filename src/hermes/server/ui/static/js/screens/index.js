// The dashboard's screens, in navigation order. To add one, write
// js/screens/<name>.js and add one import line and one entry below — nothing else.
//
// Screen contract (each module's default export):
//   { id: 'status',            // the hash route: #/status[/param/…]
//     title: 'Status',         // the navigation label
//     adminOnly: false,        // true: hidden from (and refused to) a scoped key's user
//     async render(root, ctx) } // build into `root` (an empty <section>); may return a
//                              // cleanup function, called when the user leaves the screen.
// ctx:
//   api(method, path, body?, {headers?, signal?}) → JSON (or text); throws Error(message of
//       the API's {"error": {"message"}}), err.status set; sends the cookie + X-CSRF-Token.
//   stream(path, body|null, onEvent, {signal?}) → SSE over fetch (POST if body, else GET);
//       onEvent(obj) per `data:` line; resolves when the stream ends.
//   scope: 'owner' | '<user id>'; user: the user id or null; isAdmin: owner/server key;
//   open: no server key configured; version; params: the hash's parts after the id;
//   navigate('#/sessions/<id>').
// Render data only as text: use h() from ../dom.js (textContent), never innerHTML.
import status from './status.js';
import chat from './chat.js';
import sessions from './sessions.js';
import memory from './memory.js';
import users from './users.js';
import cron from './cron.js';
import keys from './keys.js';
import logs from './logs.js';
import gateway from './gateway.js';
import tools from './tools.js';
import skills from './skills.js';
import usage from './usage.js';

export const screens = [
  status,
  chat,
  sessions,
  memory,
  users,
  cron,
  keys,
  logs,
  gateway,
  tools,
  skills,
  usage,
];
