package journal

// JudgeVerdict is the built-in judge's answer on a tail's workspace: what the app shows where
// pass/fail is, and the screenshot the judge saw.
type JudgeVerdict struct {
	// Score is nil when the judge gave none; Error says why.
	Score *int `json:"score,omitempty"`
	// Threshold is the lowest passing score, nil for a judge-noise run given none.
	Threshold *float64 `json:"threshold,omitempty"`
	// Tolerance is the flip rate judge-noise clears the threshold below (0: the default).
	Tolerance float64 `json:"tolerance,omitempty"`
	Scale     [2]int  `json:"scale"`
	Reason    string  `json:"reason,omitempty"`
	Error     string  `json:"error,omitempty"`
	// Screenshot is the page as the judge saw it; Out the judge's folder (judgements.json).
	Screenshot string `json:"screenshot,omitempty"`
	Out        string `json:"out,omitempty"`
}

// clean says the verdict holds no terminal control: the judge's reason and error are a
// model's words, and the paths name the agent's page.
func (v *JudgeVerdict) clean() bool {
	return v == nil || (clean(v.Reason) && clean(v.Error) && clean(v.Screenshot) && clean(v.Out))
}

// printable is a copy of v whose text shows control characters instead of sending them.
func (v *JudgeVerdict) printable() *JudgeVerdict {
	if v == nil {
		return nil
	}
	c := *v
	c.Reason, c.Error, c.Screenshot, c.Out = Printable(c.Reason), Printable(c.Error), Printable(c.Screenshot), Printable(c.Out)
	return &c
}
