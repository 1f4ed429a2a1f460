"""The local stack: AWS emulated by moto, our handlers run in-process, stand-ins for
OpenAI and Twilio. Used by `make local`, `make demo` and the tests."""
