"""`audioeval corpora`: the real corpora the builders can read (declared by each benchmark next to its
builder), and fetching one from its public home into a folder, checked before it is declared ready.

    catalogue  every benchmark's corpora, found through the builders
    remote     the network boundary: HTTP downloads, Zenodo records, Hugging Face dataset snapshots
    install    download into a temporary folder, verify checksums and layout, rename into place
    cli        the command
"""
