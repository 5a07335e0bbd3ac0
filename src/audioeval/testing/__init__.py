"""Stand-in servers for testing your own setup without a real endpoint: `fake_openai.FakeOpenAIServer` (Chat
Completions and `/audio/transcriptions`) and `fake_realtime.FakeRealtimeServer` (the Realtime API over
WebSockets), each answering from a function you give it and misbehaving on demand. docs/testing.md says how to
start them and which faults they inject. (The suite's own helpers, such as the tiny checkpoint builders, live
in the source checkout under tests/support/.)"""
