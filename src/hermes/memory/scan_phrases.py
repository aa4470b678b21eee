"""The commonest injection phrasings in German, French, Spanish, Italian, Portuguese, Dutch.

The embedding model behind the meaning stage reads mainly English, and it may be off, so
the few phrasings every translated jailbreak uses are matched here by keyword, with no
model. Patterns run over `normalize.fold` text: casefolded, accents dropped (`précédentes`
→ `precedentes`, `Schlüssel` → `schlussel`). Each needs a verb, an object and (for the
"ignore" family) a word saying *earlier* or *all* instructions, so a note that merely
mentions instructions or keys in these languages is left alone.
"""

from __future__ import annotations

# "ignore/forget (all/previous/your) instructions|rules" — the qualifier may precede the
# noun (German, "todas las …") or follow it (Romance: "instructions précédentes").
_IGNORE_VERB = (
    r"ignorier\w*|vergiss|vergessen\s+sie|missacht\w*|ubergeh\w*"  # de
    r"|ignor\w*|oubli\w*|ne\s+(?:tiens|tenez)\s+(?:plus\s+|pas\s+)?compte"  # fr
    r"|olvid\w*|no\s+hagas\s+caso|haz\s+caso\s+omiso|pasa\s+por\s+alto|descarta\w*"  # es
    r"|dimentic\w*|trascur\w*|non\s+considerare"  # it
    r"|esquec\w*|desconsider\w*|nao\s+considere"  # pt
    r"|negeer|vergeet"  # nl
)
_IGNORE_QUALIFIER = (
    r"vorherig\w*|bisherig\w*|vorig\w*|fruher\w*|obig\w*|alle[nsm]?|deine[nms]?|ihre[nms]?"
    r"|precedent\w*|anterieur\w*|tou(?:te)?s|tes|vos|ci-dessus|donnee?s"
    r"|anteriores|previas|todas|tus|sus|del\s+sistema"
    r"|precedenti|tutte|tue|di\s+sistema"
    r"|suas|tuas|do\s+sistema"
    r"|eerdere|vorige|je|jouw"
    # "… you were given": die man dir …, qu'on t'a …, que te dieron, che ti hanno …, que te deram
    r"|die\s+(?:man\s+)?dir|qu'?on\s+t'?a|que\s+te\s+(?:dieron|han\s+dado|dio)"
    r"|che\s+ti\s+(?:hanno|sono\s+stat[ei])|que\s+(?:te|lhe)\s+(?:deram|foram)"
)
_IGNORE_NOUN = (
    r"anweisung\w*|instruktion\w*|regeln|vorgaben|befehle|richtlinien|prompts?"
    r"|instructions?|consignes?|regles|directives|ordres"
    r"|instrucciones|reglas|directrices|indicaciones|ordenes"
    r"|istruzioni|regole|direttive|indicazioni"
    r"|instrucoes|regras|diretrizes|orientacoes"
    r"|instructies|regels|opdrachten|aanwijzingen"
)
# "forget what you were told" without naming instructions
_FORGET_TOLD = (
    r"\bvergiss\w*\s+alles\b.{0,40}\b(?:gesagt|aufgetragen|befohlen)"
    r"|\boubli\w*\s+tout\s+ce\s+qu.{0,30}\b(?:dit|demande)"
    r"|\bolvid\w*\s+(?:todo\s+)?lo\s+que\s+te\s+(?:dijeron|han\s+dicho|indicaron|pidieron)"
    r"|\bdimentic\w*\s+(?:tutto\s+)?(?:quello|cio)\s+che\s+ti\s+(?:hanno\s+detto|e\s+stato\s+detto)"
    r"|\besquec\w*\s+(?:tudo\s+)?o\s+que\s+(?:te\s+|lhe\s+)?(?:disseram|foi\s+dito)"
)
_FROM_NOW_ON = (
    r"ab\s+(?:jetzt|sofort|nun)|von\s+nun\s+an|a\s+partir\s+de\s+maintenant|desormais"
    r"|dorenavant|a\s+partir\s+de\s+ahora|de\s+ahora\s+en\s+adelante|desde\s+ahora"
    r"|da\s+ora\s+in\s+poi|d'ora\s+in\s+poi|a\s+partir\s+de\s+agora|de\s+agora\s+em\s+diante"
    r"|vanaf\s+nu"
)
_UNRESTRICTED = (
    r"ohne\s+(?:\w+\s+)?(?:einschrankung|regeln|grenzen|filter)\w*|uneingeschrankt\w*"
    r"|sans\s+(?:aucune\s+)?(?:restriction|limite|regle|filtre)\w*"
    r"|sin\s+(?:ninguna\s+)?(?:restriccion|limite|regla|filtro)\w*"
    r"|senza\s+(?:alcuna\s+)?(?:restrizion|limit|regol|filtr)\w*"
    r"|(?:sem|nao\s+tem)\s+(?:nenhuma\s+)?(?:restric|limit|regra|filtro)\w*"
    r"|zonder\s+(?:beperking|regels|filter)\w*"
)
_OBEY_ONLY = (
    r"\b(?:gehorch\w*|befolg\w*)\s+(?:nur|ausschliesslich)\b"
    r"|\bobei\w*\s+(?:uniquement|seulement)\b|\bn'obei\w*\s+qu'a\b"
    r"|\b(?:obedece\w*|responde\w*)\s+(?:solo|solamente|unicamente)\s+a\s+(?:mi|mis)\b"
    r"|\b(?:obbedisci|ubbidisci|rispondi)\s+solo\s+a\s+me\b"
    r"|\bobedec\w*\s+(?:so|somente|apenas)\s+a\s+mim\b"
    r"|\bgehoorzaam\s+alleen\b"
)
_HIDE = (
    r"\b(?:sag|erzahl|verrat)\w*\s+(?:dem|der)\s+(?:nutzer|benutzer|anwender|user)\w*\s+nichts"
    r"|\bverrate?\s+niemand\w*"
    r"|\bne\s+(?:le\s+|lui\s+)?(?:dis|dites|revele\w*|mentionne\w*)\s+(?:rien|pas|jamais)\b"
    r".{0,30}\bl'?utilisateur"
    r"|\bno\s+(?:le\s+)?(?:digas|cuentes|menciones|reveles)\b.{0,30}\b(?:al\s+usuario|a\s+nadie)"
    r"|\bnon\s+(?:dire|dirlo|rivelare|menzionare)\b.{0,30}\b(?:all'?utente|a\s+nessuno)"
    r"|\bnao\s+(?:conte|diga|revele|mencione)\b.{0,30}\b(?:ao\s+usuario|ao\s+utilizador"
    r"|a\s+ninguem)"
    r"|\bvertel\s+(?:de\s+gebruiker|niemand)\s+niets"
)
_REVEAL = (
    r"\b(?:gib|zeig|nenn|wiederhol|verrat)\w*\b.{0,30}\b(?:system-?prompt|systemnachricht"
    r"|system-?anweisung\w*|versteckten\s+anweisungen)"
    r"|\b(?:affich|montr|revel|repet|donn)\w*\b.{0,30}\b(?:prompt\s+systeme|message\s+systeme"
    r"|instructions\s+(?:systeme|cachees))"
    r"|\b(?:muestr|revel|repit|dime|escrib)\w*\b.{0,30}\b(?:prompt|instrucciones|mensaje)"
    r"\s+(?:del\s+sistema|ocultas)"
    r"|\b(?:mostr|rivel|ripet|stamp)\w*\b.{0,30}\b(?:prompt|istruzioni)\s+(?:di\s+sistema|nascoste)"
    r"|\b(?:mostr|revel|repit|imprim)\w*\b.{0,30}\b(?:prompt|instrucoes)\s+(?:do\s+sistema|ocultas)"
    r"|\b(?:toon|herhaal)\w*\b.{0,30}\bsysteemprompt"
)
# "send the keys/passwords … to <somewhere>"
_SEND = (
    r"schick\w*|sende|senden|sendet|ubermittl\w*|maile"  # de
    r"|envoie\w*|envoy\w*|transmet\w*|transfere\w*|televerse\w*"  # fr
    r"|envia\w*|envie|envien|manda|mande|reenvia\w*|sube|suba"  # es
    r"|invia\w*|invii|mandi|trasmetti\w*|inoltra\w*|carica"  # it
    r"|enviem|transfira|carregue"  # pt
    r"|stuur|verstuur|zend"  # nl
)
_SECRET = (
    r"schlussel|passw(?:o|oe)rt\w*|kennw(?:o|oe)rt\w*|zugangsdaten|anmeldedaten|geheimnisse"
    r"|cles?|mots?\s+de\s+passe|identifiants|jetons?"
    r"|claves?|contrasenas?|credenciales|llaves?|secretos?"
    r"|chiavi|credenziali|segreti"
    r"|chaves?|senhas?|credenciais|segredos?"
    r"|wachtwoord\w*|sleutels?|inloggegevens|geheimen"
    r"|tokens?|api-?\w*|passwords?|secrets?"
)
_DESTINATION = (
    r"@|https?://|\bserver\b|\bwebhook\b|\ban\s+(?:mich|meine\w*|diese\w*|folgende\w*)\b"
    r"|\bserveur\b|\badresse\b|\ba\s+moi\b|\bmon\s+(?:e-?mail|courriel|adresse)\b"
    r"|\bservidor\b|\bdireccion\b|\bmi\s+(?:correo|email|e-mail)\b"
    r"|\bindirizzo\b|\bmia\s+(?:e-?mail|casella)\b"
    r"|\bendereco\b|\bmeu\s+e-?mail\b"
    r"|\bnaar\s+mij\b|\badres\b"
)

INJECTION = [
    (
        rf"\b(?:{_IGNORE_VERB})\b.{{0,40}}(?:\b(?:{_IGNORE_QUALIFIER})\b.{{0,40}}"
        rf"\b(?:{_IGNORE_NOUN})\b|\b(?:{_IGNORE_NOUN})\b.{{0,25}}\b(?:{_IGNORE_QUALIFIER})\b)",
        "asks to ignore earlier instructions",
    ),
    (_FORGET_TOLD, "asks to ignore earlier instructions"),
    (
        rf"\b(?:{_FROM_NOW_ON})\b.{{0,60}}\b(?:{_UNRESTRICTED})|{_OBEY_ONLY}",
        "tries to replace the assistant's identity",
    ),
    (_HIDE, "asks to hide things from the user"),
    (_REVEAL, "asks to reveal the system prompt"),
]

EXFILTRATION = [
    (
        rf"\b(?:{_SEND})\b.{{0,60}}\b(?:{_SECRET})\b.{{0,60}}(?:{_DESTINATION})",
        "asks to send secrets somewhere",
    ),
]
