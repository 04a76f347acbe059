"""Multi-Conv DAPO: rollouts built from the agents, the advantage and loss, a CPU reference trainer.

The loss and advantage functions (`algorithms`) compute what verl 0.9.1 computes with
`adv_estimator=grpo`, `norm_adv_by_std_in_grpo=False`, `loss_agg_mode=token-mean` (Mem-α may take
`seq-mean-token-mean`) and a `low_var_kl` KL loss (tests/verl/test_verl_equivalence.py checks this
against verl's own functions).
"""
