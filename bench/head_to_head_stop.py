#!/usr/bin/env python3
"""`tare kernels --baseline`'s stop rule (issue 41): how often an A/A comparison gets a verdict
when the session stops once the interval is within --precision (0.25%) over at least NMIN
processes, at most 16 (what the 30 s budget allows on the VM). Processes are drawn from real A/A
sessions' per-process log ratios (each session's centred on 0), scaled 1x, 1.5x, 2x; verdicts at
alpha 0.05 for 1 and 2 comparisons (Bonferroni). Measures, does not assert:

    bench/head_to_head_stop.py DIR    # DIR: --export-json files of A/A sessions
                                      # (bench/head_to_head_placement.sh with OUT=DIR)

Prints, per scale and NMIN: (false-verdict rate, mean processes) for m=1 and m=2. Slow (minutes).
"""
import json,glob,sys,numpy as np
from scipy import stats
rng=np.random.default_rng(5)
pool=[];sds=[]
for f in sorted(glob.glob(sys.argv[1]+'/*.json')):
    v=json.load(open(f))["extra"]["head_to_head"]
    for c in v["comparisons"]:
        r=np.log([p["ratio"] for p in c["processes"]]); sds.append(r.std(ddof=1)); pool+=list(r-r.mean())
pool=np.array(pool); print("per-process sd: median %.5f range %.5f-%.5f; pooled %.5f kurtosis %.2f"%(np.median(sds),min(sds),max(sds),pool.std(),stats.kurtosis(pool)))
def sim(nmin,m,nmax=16,prec=0.0025,N=20000,scale=1.0):
    conf=1-0.05/m;fp=0;ns=0
    for _ in range(N):
        x=rng.choice(pool,nmax)*scale
        for n in range(nmin,nmax+1):
            y=x[:n];h=stats.t.ppf(1-(1-conf)/2,n-1)*y.std(ddof=1)/np.sqrt(n)
            if h<=prec or n==nmax: break
        fp+=abs(y.mean())>h; ns+=n
    return fp/N, ns/N
for scale in [1.0,1.5,2.0]:
  for nmin in [5,8,10]:
    print("scale",scale,"nmin",nmin,"m=1",sim(nmin,1,scale=scale),"m=2",sim(nmin,2,scale=scale))
