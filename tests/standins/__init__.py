"""Loopback stand-ins for the chat platforms (Telegram, Slack, Discord, WhatsApp, Twilio) and a
local Synapse: the gateway's tests and benches talk to these instead of the internet. They live
under tests/, not in the wheel, because only Hermes's own tests and benches need them."""
