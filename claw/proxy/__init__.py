"""`source=proxy`: the OpenAI-compatible server, its sessions, the reading of which message answers which
reply (continuation), turn outcomes and the labelling of judged turns into samples."""
