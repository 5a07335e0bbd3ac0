"""Reference points that are not language models: `chance`, `demo-majority` and `knn-icl`. Each reads only
what a prompt shows: the request's label space and its label-free view of the episode (`Request.shown`).
A benchmark brings its own baselines in its wing (its `backends.py`)."""
