#!/bin/bash
ok=0; grep -qx hello /app/out.txt && ok=1
printf '{"reward": %s, "style": 0.5}\n' "$ok" > /logs/verifier/reward.json
