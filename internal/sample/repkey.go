package sample

// RepKey names one repetition of one platform in one cell, as stored:
// warm-ups are numbered 0..Warmup-1 with Warmup set, measured repetitions
// 0..Reps-1 without.
type RepKey struct {
	Platform, Options, Workload, Params string
	Instances                           int
	Rep                                 int
	Warmup                              bool
}
