"""`audioeval view`: a local web app (or a static site) to look at and listen to finished runs.

The viewer reads only what a run folder holds (results.json, samples_<task>.jsonl, the report files) and
rebuilds each sample's audio from the task configuration the run recorded, through the public episode
builders: episodes are pure functions of (config, seed, index), so no audio has to be stored.

    run_folder.py   loading a run folder and indexing its sample records
    samples.py      a sample record as the browser shows it: flags, facets, the conversation
    regenerate.py   rebuilding a sample's clips and checking them against the logged sha256
    overview.py     the overview page: report tables and plots, settings, versions, timing, failures
    site.py         the pages' data, shared by the server and the static export
    server.py       the local HTTP server
    export.py       the static site
    cli.py          `audioeval view RUN_DIR ... [--port P] [--host H] [--export DIR]`
"""
