"""`tritonbisect workaround`: what change makes the bad Triton pass an oracle, today.

    facts_main.py  run by the Triton's own Python: the switches it reads, its ptxas
    triton_facts.py  runs it: Facts
    changes.py     the candidate changes, one at a time and in pairs (pure)
    trials.py      each candidate a compile oracle folder of its own, in its own process, cached
    cost.py        a passing change's cost by the oracle's measure (pure)
    search.py      baseline, singles, pairs, ranking
    render.py      the answer: the code or environment change to paste, or none
"""
