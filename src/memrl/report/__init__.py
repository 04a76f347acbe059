"""Tables and figures: reproduced numbers beside the paper's, written atomically.

`tables` reads the per-(system, length) metrics files and builds Table 1 (CSV, Markdown, LaTeX);
`figures` plots accuracy against context length (PNG, PDF). Both read only metrics files and the
transcribed paper numbers in config/paper/.
"""
