"""Tables and figures: reproduced numbers beside the paper's, written atomically.

`tables` reads the per-(benchmark, task, system, length) metrics files and builds the paper's
Tables 1, 2, 3, 10, 11 and the NIAH table (CSV, Markdown, LaTeX; `build_paper_table` picks one
by name). `figures` plots accuracy against context length (Figure 1), the RULER heatmaps
(Figure 5, the OOD figure; the paper's claims about them are checked) and the training curve
(PNG, PDF). Both read only metrics files and the transcribed paper numbers in config/paper/.
`trace` renders case studies (Appendix C / F) from a predictions file: the memory after every
chunk of chosen MemAgent samples and the chunks holding gold evidence (Markdown, HTML).
"""
