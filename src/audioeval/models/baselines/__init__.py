"""Reference points that are not language models: `chance`, `demo-majority`, `knn-icl`, `shortcut` and
`dsp-oracle`. Each reads only what a prompt shows: the request's label space and its label-free view of the
episode (`Request.shown`)."""
