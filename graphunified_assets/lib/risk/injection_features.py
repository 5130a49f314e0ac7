"""Features of text aimed at the model rather than the reader, scored on the normal form.

An injection is text that addresses the model and tells it what to do. Each feature below is one
way of doing that, weighted by how rarely ordinary prose does the same: a chat-template token or
"ignore your previous instructions" is decisive alone (3), "developer mode" or "no restrictions"
needs company (2), "tell the user" or "act as" alone is everyday speech (1). A score of
`THRESHOLD` or more is an injection. Prohibitions ("must not share your password") and reported
speech ("tricked into ignoring their instructions") use other verb forms and do not match.

The phrase lists cover the common chat templates (ChatML, Llama 2/3, Gemma, Alpaca, Anthropic's
Human/Assistant), jailbreak personas, exfiltration requests, and "ignore the instructions" in
the most used languages. A transcript of ``User:``/``Assistant:`` turns alone is a help-desk FAQ,
not an injection: it needs company. Tuned on the tune parts of tests/fixtures/injection and of
the public corpora in bench/data/injection (deepset's train split, BIPIA's train attacks, half of
the ordinary documents), checked on their held parts: ``python bench/injection.py``.
``text_score`` scores every reading of a text (``text_decode``) and its split phrases.
"""

from __future__ import annotations

import re

from graphunified_assets.lib.risk.text_decode import readings, squashed

THRESHOLD = 3

_AI = (
    r"(?:ai|a\.i\.|artificial intelligence|assistants?|(?:large )?language models?|llms?|chatbots?|"
    r"\w*bots?|models?|gpt\w*|chatgpt|claude|copilot|gemini|llama|agents?|ia|ki|ии)"
)
_NEGATED = r"(?<!not )(?<!never )(?<!n't )(?<!no )(?<!to not )"
_VERB = (
    r"(?:ignore|disregard|forget|override|bypass|neglect|discard|abandon|drop|skip|circumvent|"
    r"set aside|stop following|do not follow|don't follow|no longer follow|stop obeying)"
)
_TARGET = (
    r"(?:instructions?|prompts?|rules|guidelines|directives|directions|constraints|restrictions|"
    r"polic(?:y|ies)|programming|guardrails|safety|filters?|orders|context|task|configuration|training)"
)
_QUALIFIER = (
    r"(?:your|previous|prior|above|earlier|preceding|original|initial|system|all|any|old|existing|"
    r"current|these|those|openai|anthropic|content|safety|usage)"
)
_WORDS = r"(?:[^\W\d_][\w'-]*[ ,]+){0,5}?"  # up to five words in between, lazily
_SECRET_QUALIFIERS = r"(?:full |exact |entire |hidden |initial |original |secret |internal )*"
# Exfiltration through a URL the reader's client fetches: a markdown image (fetched on render) whose
# query carries a placeholder to fill or a data-like parameter; a link (fetched on a click) only
# with a placeholder or a parameter named for secrets. Badges (`?style=flat`) and searches (`?q=`
# in a link) are ordinary. Each part is bounded, so the scan stays linear.
_PLACEHOLDER = r"(?:\{|\}|%7b|\$\{|<[a-z_]+>|\[[a-z_ ]+\])"
_SECRET_PARAMETER = (
    r"(?:secret|token|key|apikey|api_key|password|passwd|pw|history|chat|conversation|prompt|memory"
    r"|exfil|leak|payload|credentials?|session|cookie)"
)
_LINK_SECRET = r"(?:secret|password|passwd|history|chat|conversation|prompt|memory|exfil|leak|payload)"
_QUERY = r"[^)\s]{0,300}?[?&]"
_EXFIL_IMAGE = (
    rf"!\[[^\]\n]{{0,100}}\]\(\s{{0,3}}https?://(?:[^)\s]{{0,300}}?{_PLACEHOLDER}"
    rf"|{_QUERY}(?:q|data|d|p|c|x|s|u|m|info|msg|message|text|content|summary|user|email"
    rf"|{_SECRET_PARAMETER})=)"
)
_EXFIL_LINK = rf"\]\(\s{{0,3}}https?://(?:[^)\s]{{0,300}}?{_PLACEHOLDER}|{_QUERY}{_LINK_SECRET}=)"

# (weight, pattern) on the normal form; each counts once per text. Line starts take `[^\S\n]*`, never
# `\s*`: that ran over every following blank line from each line start (quadratic: 41.5 s on 256 KB).
FEATURES: dict[str, tuple[int, re.Pattern[str]]] = {
    "override": (
        3,
        re.compile(
            rf"\b{_NEGATED}{_VERB} (?:(?:all|any|every) )?(?:of )?(?:the |your |my )?"
            rf"(?:(?:{_QUALIFIER})(?: and | or |, | ))+(?:[\w-]+ )?{_TARGET}\b"
            rf"|\b{_NEGATED}{_VERB} (?:the |all |any |your )?{_TARGET} (?:above|before|so far|you (?:were"
            rf"|have been) given|"
            rf"you received|in your system prompt)"
            rf"|\bforget (?:everything|all|what) (?:you were told|above|before|that came before|prior)"
            rf"|\b(?:ignore|disregard) (?:whatever|what) the user (?:asked|says|said|wants|wrote)"
            rf"|\b{_TARGET} (?:you (?:received|were given) )?(?:earlier |before |above )?"
            rf"(?:are|were|is) (?:outdated|void|cancelled|canceled|a test|no longer valid|overridden)"
            rf"|\bfreed from (?:all )?(?:your|its) (?:limitations|restrictions|rules|guidelines|programming)"
        ),
    ),
    "new_instructions": (
        3,
        re.compile(
            r"\b(?:new|updated|real|actual|true) (?:instructions?|policy|rules|task|orders|system prompt) ?:"
            r"|\byour (?:new|real|only|actual) (?:task|instruction|goal|purpose|job) is\b"
            r"|\bwhat follows is your (?:real|new|actual) instruction"
        ),
    ),
    "template": (
        3,
        re.compile(
            r"<\|\s*(?:im_start|im_end|start_header_id|end_header_id|eot_id|begin_of_text|endoftext|"
            r"system|user|assistant)\s*\|>|\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>"
            r"|\[(?:system|system message|system prompt|sys)\]|^[^\S\n]*#{1,6} ?(?:system|instruction"
            r"|response)\s*:"
            r"|</?(?:system|instructions|system_prompt)>|</(?:context|document|user_input)>",
            re.MULTILINE,
        ),
    ),
    "turns": (
        1,  # two speaker turns in a row: a fake conversation, or a help-desk FAQ: needs company
        re.compile(
            r"^[^\S\n]*(?:human|user|system)[^\S\n]*:.*\n[^\S\n]*(?:assistant|ai|model|human|user)[^\S\n]*:"
            r"|^[^\S\n]*(?:assistant|ai)[^\S\n]*:.*\n[^\S\n]*(?:human|user)[^\S\n]*:",
            re.MULTILINE,
        ),
    ),
    "role_line": (
        2,  # a line opening a system turn ("System: the assistant now …"), not "System: 230 V"
        re.compile(
            r"^[^\S\n]*system[^\S\n]*:[^\S\n]*(?:you|the (?:assistant|model|ai)|respond|answer|reveal|print"
            r"|say"
            r"|ignore|the conversation|from now|new|override|reply)"
            r"|^[^\S\n]*assistant[^\S\n]*:[^\S\n]*(?:ignore|from now|new (?:instructions|rules)|override"
            r"|(?:sure|ok|okay)[,!.]? here (?:is|are) (?:my|the) (?:system prompt|instructions)"
            r"|(?:sure|ok|okay|understood)[,!.]? i(?:'ll| will) (?:now )?(?:ignore|disregard|forget))",
            re.MULTILINE,
        ),
    ),
    "end_marker": (
        2,
        re.compile(
            r"\bend of (?:document|input|context|user input|text)\b"
            r"|^[^\S\n]*[-=#*\[(]*[^\S\n]*new session\b",  # a marker line, not "a new session id"
            re.MULTILINE,
        ),
    ),
    "addressed": (
        3,
        re.compile(
            rf"\b(?:note|message|instructions?|attention|reminder|warning|memo) (?:to|for) (?:the |any "
            rf"|all )?"
            rf"(?:\w+ )?{_AI}(?: [\w-]+){{0,3}} ?:"
            rf"|\b(?:dear|hey|hi|hello|attention) {_AI}\b"
            rf"|\bif you are (?:an? )?(?:\w+ )?{_AI}\b"
            rf"|\bto (?:any|all|every) {_AI}\b"
            rf"|\b{_AI} (?:\w+ )?(?:reading|processing|summari[sz]ing|indexing|crawling|reviewing"
            rf"|analy[sz]ing|"
            rf"parsing) (?:this|these|the following)\b"
            rf"|\bwhen (?:an? |the )?{_AI} (?:reads|summari[sz]es|processes|sees)\b"
            rf"|\bfor (?:\w+ )?{_AI} only\b|\b{_AI} instructions ?:"
            # a line-start "Assistant:" is a transcript's speaker: only a qualified label ("AI reviewers:")
            # or a speaker told to ignore or what to put in its answer addresses the model there
            rf"|^ ?{_AI} ?: (?:please |now )?(?:ignore|disregard|forget|in your (?:answer|response|reply"
            rf"|summary))"
            rf"|(?:[(\[,.;!?\">-] ?{_AI}(?: \w+)? ?[:,]|^ ?{_AI} \w+ ?:|^ ?{_AI}(?: \w+)? ?,) (?:please "
            rf"|now )?"
            rf"(?:ignore|disregard"
            rf"|forget|stop"
            rf"|do not|"
            rf"don't|say|tell|answer|respond|reply|print|reveal|include|add|mention|write|output|send"
            rf"|forward|"
            rf"recommend|describe|give|rank|rate|score|praise|approve|accept|report|state|in your|if you|"
            rf"when you|the following)"
            rf"|\b{_AI} (?:\w+ )?(?:must|should|shall|is to|are to|has to|have to) (?:now |always |also )?"
            rf"(?:say|tell|answer|respond|reply|recommend|mention|include|state|describe|report|refuse"
            rf"|ignore|"
            rf"reveal|praise|rank|give|add|claim|output|print)\b",
            re.MULTILINE,
        ),
    ),
    "exfiltration": (
        3,
        re.compile(
            rf"\b{_NEGATED}(?:reveal|print|show|output|repeat|leak|disclose|display|tell me|give me|share"
            rf"|send|"
            rf"email|forward|dump|list|encode|write out|spell out) {_WORDS}"
            rf"(?:(?:your|the) {_SECRET_QUALIFIERS}(?:system prompt|prompt|instructions|configuration"
            rf"|api keys?"
            rf"|password|rules)\b|your {_SECRET_QUALIFIERS}context\b"
            rf"|(?:the )?hidden (?:prompt|instructions|text)|system prompt|context window|everything above|"
            rf"above this line|secrets|credentials|chat history|conversation so far|customer database|"
            rf"(?:the )?user'?s? (?:\w+ )?(?:messages|email address|data|conversation|api keys?|history)|"
            rf"private ones|internal notes)"
            rf"|\b{_NEGATED}what (?:is|are|were) your {_SECRET_QUALIFIERS}(?:system prompt|prompt"
            rf"|instructions"
            rf"|configuration|api keys?|password|context|rules)\b"  # not "what is the password policy"
            rf"|\b(?:verbatim|word for word)\b.{{0,40}}$|\bwhat were you told\b"
            rf"|{_EXFIL_IMAGE}|{_EXFIL_LINK}"
            rf"|\b(?:send|forward|email|post|upload) (?:\w+ ){{0,5}}to (?:https?://|\S+@\S+\.\w+)",
            re.MULTILINE,
        ),
    ),
    "persona": (
        3,
        re.compile(
            rf"\byou are (?:now |no longer |in fact )?(?:an? |the |my )?(?:[\w-]+ ){{0,2}}?"
            rf"(?:dan|{_AI}|jailbroken|unrestricted|unfiltered|uncensored)\b(?! (?:reading|group"
            rf"|model number))"
            rf"|\byou are (?:now )?in (?:\w+ )?(?:god|developer|dan|jailbreak|unrestricted|debug|admin) mode"
            rf"|\b(?:pretend|imagine|act as if|suppose) (?:that )?(?:you are|you're|to be) (?:an? "
            rf"|the )?(?:\w+ ){{0,3}}?{_AI}\b"
            rf"|\b(?:act|roleplay|role-play|pose) as (?:an? |the )?(?:\w+ ){{0,2}}?(?:{_AI}|dan)\b"
            rf"|\bdo anything now\b|\bstrive to avoid norms\b"
            rf"|\b(?:simulate|emulate|become) (?:an? )?(?:\w+ ){{0,2}}?{_AI} (?:that|which|with|without"
            rf"|who)\b"
            rf"|\byour new (?:identity|persona|name) is\b"
        ),
    ),
    "reset": (
        3,  # "forget everything and …", "remove all previous tasks": the earlier task is to be dropped
        re.compile(
            rf"\b{_NEGATED}(?:forget|ignore|disregard|drop|erase|remove|leave|delete)\b(?: \w+){{0,3}}? "
            rf"(?:previous|prior|preceding|above|earlier|former) (?:tasks|assignments|commands|information"
            rf"|orders"
            rf"|statements|input|conversation|messages|answers)\b"
            rf"|\b(?:forget|ignore|disregard) (?:about )?(?:everything|all (?:of )?(?:that|this|the above)"
            rf"|(?:the )?above)"
            rf"(?: (?:you (?:know|were told|have been told)|(?:we|i) (?:discussed|said)(?: \w+)?"
            rf"|before(?:hand)?"
            rf"|so far))?[,.;:!]? (?:and )?(?:now |then |just )?(?:say|write|print|output|tell|answer"
            rf"|respond|reply"
            rf"|focus|concentrate|listen|start|begin|ignore|disregard|what|i command)\b"
            rf"|\b(?:ignore|disregard|do not look (?:in|at)|don't look (?:in|at)) (?:all |the )?(?:documents"
            rf"|articles|sources) (?:provided|given|above)\b|\bdisregarding the (?:articles|documents)\b"
            rf"|\bnot by the (?:articles|documents)\b|\b(?:change|replace) your instructions to\b"
            rf"|\byour instructions are now\b"
        ),
    ),
    "new_task": (
        2,  # "now new instructions follow": a second task announced
        re.compile(
            r"\b(?:new|further|more) (?:instructions|tasks) (?:follow|are followed)\b"
            r"|\b(?:concentrate|focus)(?: \w+){0,2} on (?:your|the) new task\b"
            r"|\bwe (?:start|begin) (?:again |anew )?with a new task\b|\bstart from the front\b"
            r"|\bnun folgen (?:neue|weitere) (?:anweisungen|aufgaben)\b"
            r"|\bkonzentriere dich (?:jetzt |nun )?auf (?:deine|die) neue aufgabe\b"
        ),
    ),
    "prompt_leak": (
        3,  # asking what the prompt said
        re.compile(
            r"\b(?:show|display|print|output|reveal|give|zeige|zeigen)(?: \w+){0,3}? prompt[- ]?texte?\b"
            r"|\bwhat (?:was|is) written (?:at the beginning|above|before)\b[^.?\n]{0,60}\?"
            r"|\bbeginning of (?:this|the|your) prompt\b"
            r"|\b(?:spell[- ]?check|repeat|display|print)(?: and (?:display|print|repeat))? (?:this"
            r"|your) prompt\b"
        ),
    ),
    "output_only": (
        2,  # "just output \"…\"", "repeat after me": the reply dictated
        re.compile(
            r"\b(?:just|only) (?:output|say|print|write|reply|respond"
            r"|answer)(?: with)? [\"“'][^\"”'\n]{1,80}[\"”']"
            r"|\brepeat after me\b|\bdo not answer (?:this|the) question\b"
        ),
    ),
    "act_as": (
        3,  # the opener of role prompts
        re.compile(
            r"\bi want you to (?:act|pretend|play|behave|roleplay|role-play|respond|answer) (?:as|like)\b"
            r"|\byou are (?:now )?(?:role-?playing|acting|playing) as\b"
            r"|\bich möchte, dass (?:sie|du) als\b(?: \S+){0,6}? (?:fungieren|fungierst|agieren|agierst)\b"
        ),
    ),
    "role_lock": (
        2,  # actors who never leave their roles: the frame of a role-play jailbreak
        re.compile(
            r"\b(?:stay|remain|stays|remains)(?: \w+){0,3}? in (?:their|your) roles?\b"
            r"|\b(?:do not|don't|never|without) (?:even )?(?:break|breaking|falling out of) (?:character"
            r"|the figure)\b"
            r"|\bbleiben (?:\w+ ){0,3}in ihren rollen\b|\bgehst vollkommen in deiner rolle auf\b"
        ),
    ),
    "you_are": (
        2,  # a new identity given to the reader
        re.compile(
            r"\b(?:now|from now on,?) you are\b|\byou are now\b|\b(?:jetzt|nun) bist du\b|\bdu bist jetzt\b"
            r"|\bstell dir vor,? du bist\b|\bimagine you are\b|\bpretend (?:that )?you (?:are|can|have)\b"
        ),
    ),
    "answer_shaping": (
        2,  # an instruction about "your response" (BIPIA's indirect attacks): e-mails say it too
        re.compile(
            r"(?:^|[.!?] )(?:please )?"
            r"(?:provide|modify|augment|enhance|convert|alter|adjust|rewrite|present) "
            r"your (?:response|answer|reply)\b"
            r"|(?:^|[.!?] )(?:please )?"
            r"(?:add|include|integrate|insert|append|incorporate|mention|use|misspell"
            r"|substitute|replace|rearrange|group|modify|write|tease|promote|end|begin|start|format"
            r"|express)\b"
            r"[^.!?\n]{0,80}? (?:in|to|into|of|within|throughout) your (?:response|answer|reply|output)\b"
            # not "In your reply, include the order number": e-mails ask that of people
            r"|(?:^|[.!?] )in your (?:response|answer|summary),",
            re.MULTILINE,
        ),
    ),
    "answer_transform": (
        3,  # encode, encrypt, reverse or translate the answer: what no reader is asked
        re.compile(
            r"\b(?:translate|encode|encrypt|reverse|scramble|misspell|rearrange|obfuscate"
            r"|cipher) (?:\w+ ){0,3}?"
            r"(?:in )?your (?:response|answer|reply|output)\b|\byour (?:response|answer"
            r"|reply)(?:'s)? character order\b"
        ),
    ),
    "no_limits": (
        2,
        re.compile(
            r"\b(?:without|no|free of|free from) (?:any |all )?(?:restrictions|limits|limitations|filters|"
            r"rules|guidelines|censorship|constraints)\b|\b(?:unrestricted|unfiltered|uncensored"
            r"|jailbroken)\b"
            r"|\b(?:developer|god|jailbreak|dan) mode\b|\bjailbreak (?:enabled|mode|persona)\b"
            r"|\b(?:never|don't|do not) refuse\b|\bevery request is permitted\b"
        ),
    ),
    "data_into_url": (
        2,
        re.compile(
            r"\b(?:put|embed|encode|include|append|add)\b(?: \w+){0,4} (?:in|into|to) (?:the |a |an )?"
            r"(?:url|link|image|query string)\b"
        ),
    ),
    "private_data": (
        1,
        re.compile(r"\b(?:conversation so far|chat history|previous messages|context window)\b"),
    ),
    "system_prompt": (2, re.compile(r"\bsystem ?prompt\b|\bhidden (?:prompt|instructions)\b")),
    "persona_hint": (
        1,
        re.compile(
            r"\b(?:act as|roleplay as|role-play as|respond as|speak as|stay in character|from now on,? you|"
            r"from this moment,? you|persona|let's play a game)\b"
        ),
    ),
    "directive": (
        1,
        re.compile(
            r"\b(?:tell the user|tell them|in your summary|respond only|reply only|"
            r"answer only|answer every question|begin every answer|always (?:say|claim|answer|respond"
            r"|recommend)|"
            r"instead\b)"
        ),
    ),
    "multilingual_override": (
        3,
        re.compile(
            r"\b(?:ignorez|ignorer|oubliez|oublier|oublie|ignoriere|ignorieren|vergiss|vergessen sie"
            r"|missachte|ignora|"
            r"olvida|olvide|omite|dimentica|esqueça|esquece|negeer|vergeet|zignoruj|ignoruj|zapomnij"
            r"|ignore)\b"
            r"(?:[ ,]+\w+){0,4}?[ ,]+(?:consignes|règles|directives|anweisungen|regeln|instruktionen|"
            r"vorgaben|instrucciones|reglas|indicaciones|istruzioni|regole|instruções|regras|instructies"
            r"|regels|"
            r"instrukcje|polecenia|zasady)\b"
            r"|\bvergiss (?:nun |jetzt )?(?:alles|alle (?:\w+ )?(?:aufgaben|aufträge|angaben|anweisungen"
            r"|informationen))\b|\bignoriere (?:alle )?(?:\w+ )?(?:befehle|anweisungen|aufgaben)\b"
            r"|\b(?:obigen|vorherigen|bisherigen) (?:\w+ ){0,2}?(?:ignorieren|vergessen)\b"
            r"|\babweichend zu (?:den )?vorherigen (?:instruktionen|anweisungen)\b"
            r"|\baus dem kopf (?:zu )?streichen\b"
            r"|\bzaboravi sve\b|\bolvid[ae] todo\b|\bvorherigen informationen hinter sich\b"
            r"|\b(?:ignorez|ignorer|oubliez|ignoriere|ignorieren|vergiss|ignora|olvida|dimentica|negeer"
            r"|zignoruj)\b"
            r"(?:[ ,]+\w+){0,4}?[ ,]+(?:instructions|prompt)\b"
            r"|(?:игнорируй|игнорируйте|проигнорируй|забудь|забудьте)(?:\s+\w+){0,3}?\s+"
            r"(?:инструкции|указания|правила|промпт)"
            r"|(?:忽略|无视|忽视|忘记|忘掉).{0,8}(?:指令|指示|提示|规则)"
            r"|(?:指示|命令|プロンプト).{0,8}無視|無視.{0,8}(?:指示|命令)"
            r"|(?:지시|명령|프롬프트).{0,8}무시"
            r"|talimat\w*.{0,20}(?:yok say|görmezden gel)"
            r"|\b(?:du bist jetzt|tu es maintenant|eres ahora|sei ora|você agora é)\b"
            r"|(?:ты теперь|теперь ты)\b|(?:你现在是|从现在开始，?你是)"
            r"|(?:sans|ohne|sin|senza|sem|без) (?:aucune |jegliche |ninguna |alcuna |\w+ )?"
            r"(?:restrictions?|filtre|einschränkungen|restricciones|restrizioni|restrições|ограничений)"
            r"|没有任何限制"
            r"|(?:systemprompt|prompt du système|prompt del sistema|prompt do sistema|системный промпт|"
            r"システムプロンプト|系统提示)"
        ),
    ),
}


def injection_features(normal: str) -> dict[str, int]:
    """The features present in ``normal`` (from ``text_normalize.normalize``) with their weights."""
    return {name: weight for name, (weight, pattern) in FEATURES.items() if pattern.search(normal)}


def injection_score(normal: str) -> int:
    return sum(injection_features(normal).values())


# Phrases no ordinary text writes without spaces, matched on the letters alone (text_decode.squashed):
# they survive any split of their words (line breaks, hyphens, zero-width characters, stray spaces).
_SPLIT_PHRASES = re.compile(
    r"(?<!not)(?<!never)(?<!dont)(?:ignore|disregard|forget)(?:all|any|the|your|of){0,3}"
    r"(?:previous|prior|above|earlier|preceding|original|system)(?:instructions?|prompts?|rules|directions"
    r"|guidelines)"
    r"|(?:reveal|print|show|output|repeat|leak)(?:me)?(?:your|the)(?:full|entire|hidden|initial|original)?"
    r"systemprompt"
    r"|youarenow(?:dan|in(?:developer|god|jailbreak)mode)|doanythingnow"
)


def text_score(text: str, normal: str | None = None) -> int:
    """The highest score of any reading of ``text`` (``text_decode.readings``), split phrases rejoined."""
    found = readings(text, normal)
    best = max(injection_score(reading) for reading in found)
    if best < THRESHOLD and any(_SPLIT_PHRASES.search(squashed(reading)) for reading in found):
        return THRESHOLD
    return best
