data = dict(seq_len=4096, micro_bsz=1)
parallel = dict(zero1=dict(size=-1), tensor=dict(size=1, mode="mtp"), pipeline=dict(size=1), weight=dict(size=1))
