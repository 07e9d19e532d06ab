"""The regression set: a frozen, versioned sample of real questions (wins, contested calls, open wounds) rebuilt
from the shadow log and ingested replay logs, stratified across question clusters with recorded inclusion
probabilities, so a gate's figures can be reweighted back to production traffic."""
