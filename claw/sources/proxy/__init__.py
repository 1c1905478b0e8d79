"""`source=proxy`: the OpenAI-compatible server, its sessions, the reading of which message answers which
reply (continuation) and turn outcomes; a judged turn becomes a sample in claw/judge/labelling.py."""
