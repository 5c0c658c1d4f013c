"""`python -m simulator.providers.llama_server ARGS`: llama-cpp-python's OpenAI-compatible server
(`python -m llama_cpp.server ARGS`, the same arguments) with llama.cpp's extra CPU buffer types off, as the
in-process provider loads its models (simulator/providers/local.py, `without_extra_buffers`: on a CPU that
reports AMX in a virtual machine that does not grant it, the server's first completion dies with SIGSEGV).
"""

from __future__ import annotations

from simulator.providers.local import passive_threads, without_extra_buffers

with passive_threads():  # llama.cpp's library is loaded here, which is when OpenMP reads it
    import llama_cpp
    from llama_cpp.server.__main__ import main

if __name__ == "__main__":
    with without_extra_buffers(llama_cpp):
        main()
