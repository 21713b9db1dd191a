"""The one-pass methods: fillings drawn or searched for without chains, and what each costs.

- the orders (``left-to-right``, ``random-order``, ``confident-first``, ``argmax``, ...) draw a filling in one
  pass a blank: :mod:`infill.lm.mlm_draws`, kept with the masked LM, since the MCMC samplers' block proposals draw
  from them too;
- :mod:`.particles`: sequential Monte Carlo through an order's steps (``smc``);
- :mod:`.product_search`: the exact PLL over products of per-blank candidates (``product-search``);
- :mod:`.methods`: their entries in the one registry of methods, with the encoder sequences and forward passes one
  draw of each takes, which the budget reads.
"""
