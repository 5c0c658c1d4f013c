"""The phone line: the engine plays a telephony carrier (Twilio Media Streams over a WebSocket) to a voice
bot, a simulated caller speaks the patient's words, the bot's speech is transcribed locally, and what only
voice gets wrong (late answers, talking over or cutting off the caller, dead air, mishearing) is measured.
See docs/voice.md.

One idea per module: `mulaw` (the codec), `wire` (the messages), `speech` (the caller's voice), `playback`
(the bot's audio as the caller hears it), `call` (one call), `transcribe` and `language_model` (the local
recogniser), `adapter` (the `voice` bot kind), `measures` (the figures), `section` (the report section).
"""
