package stats

import "math"

// fixedDesign is the runs per side a fixed design needs for 80% power at 95% (two-sided z
// test of two proportions).
func fixedDesign(pa, pb float64) int {
	za, zb := 1.959963984540054, 0.8416212335729143
	return int(math.Ceil((za + zb) * (za + zb) * (pa*(1-pa) + pb*(1-pb)) / ((pa - pb) * (pa - pb))))
}
