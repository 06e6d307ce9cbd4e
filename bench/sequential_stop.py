"""The chance that the early stop of tare's default interleaved rule (`conclude::analysis::
decided`: a comparison whose paired-t interval at 1 - alpha/STRICT excludes 1 ends measuring)
fires on an A/A comparison, over the looks `plan::stop::Schedule` takes (every round to 100,
then every 5%). Normal per-round log ratios, 20,000 simulated sessions per cell. The final
verdict at alpha adds its own nominal rate; this is what looking early can add on top.

    python3 bench/sequential_stop.py > bench/sequential_stop.out.txt
"""
import numpy as np
from scipy import stats
rng=np.random.default_rng(1)
def looks(nmax):
    n=10; out=[]
    while n<=nmax:
        out.append(n); n = n+1 if n<100 else n+ -(-n//20)
    return out
for strict in [100,500,1000]:
  for nmax in [30,100,1000]:
    L=looks(nmax); a=0.05/strict
    tc={n:stats.t.ppf(1-a/2,n-1) for n in L}
    sims=20000; hit=0
    x=rng.standard_normal((sims,nmax))
    cs=np.cumsum(x,axis=1); cs2=np.cumsum(x*x,axis=1)
    anyhit=np.zeros(sims,bool)
    for n in L:
        m=cs[:,n-1]/n; v=(cs2[:,n-1]-n*m*m)/(n-1); t=m/np.sqrt(v/n)
        anyhit |= np.abs(t)>tc[n]
    print(f"strict α/{strict} looks to {nmax}: early-stop false verdicts {anyhit.mean()*100:.2f}%")
