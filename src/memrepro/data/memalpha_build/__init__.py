"""Mem-α's training and validation sets built from their public sources (paper Appendix A.1).

One module a kind of source, each builder pure and seeded (a `random.Random` passed in):

| module            | sources                          | Table 6's category |
|-------------------|----------------------------------|--------------------|
| `documents`       | SQuAD, HotpotQA                  | accurate retrieval |
| `conversations`   | LongMemEval-Train, PerLTQA       | accurate retrieval |
| `classification`  | PubMed-RCT, NLU, TREC-C          | test-time learning |
| `booksum`         | BookSum                          | long-range understanding |
| `split`           | the 90 % cut and the cap of 100 a source (Table 7) | |

A builder returns instances in the released parquet's schema (`common.instance`). Where Mem-α's
official processing script and the paper differ, the builder takes both as an argument.
"""
