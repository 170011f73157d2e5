"""The live evaluation (`amux eval live`, issue 7): real agents, a real Hub, a user's model.

| module | holds |
|---|---|
| `live.py` | the run: capture, window check, samples, report |
| `scenarios.py` | the six scenarios and their oracles, as data |
| `agents.py` | each adapter's headless turn acted on (home, arguments, answer); the credential |
| `proxy.py` | the recording pass-through proxy between agent and endpoint |
| `model_apis.py` | the four model APIs: history, usage, a canned reply |
| `evidence.py` | what one session did: memory calls, writes outside memory, store, answer |
| `classify.py` | one category per sample from its evidence, the note guide's flags beside it |
| `truncation.py` | truncated prompts in the endpoint's counts, after the run |
| `workspace.py` | the temporary AMUX_HOME and Hub, the throwaway repository, snapshots |
| `report.py` | pass rates and the rates beside them, the printed tables, the JSON report |
| `progress.py` | progress on standard error: a rich bar on a terminal, plain lines otherwise |
"""
