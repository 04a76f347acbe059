"""Multi-Conv DAPO: rollouts built from the agents, the advantage and loss, a CPU reference trainer.

The loss and advantage functions (`algorithms`) compute what verl 0.9.1 computes with
`adv_estimator=grpo`, `norm_adv_by_std_in_grpo=False`, `loss_agg_mode=token-mean` (Mem-α may take
`seq-mean-token-mean`) and a `low_var_kl` KL loss (tests/verl/test_verl_equivalence.py checks this
against verl's own functions).
"""

# verl's loss_agg_mode names a run may take (memrepro.train.algorithms.aggregate computes both): a
# mean over every token of the batch (MemAgent; Mem-α's official script), or each row's (action's)
# token mean averaged over the rows with tokens (Mem-α's Eq. 2: 1/|a_t| inside the sum)
TOKEN_MEAN, ROW_MEAN = "token-mean", "seq-mean-token-mean"
LOSS_AGG_MODES = (TOKEN_MEAN, ROW_MEAN)
