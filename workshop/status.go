package workshop

// Status is where a writer is, as its state.json says. A resume sets a stopped writer back
// to StatusPrepared; only a collect that checked the writer's outputs makes it
// StatusCompleted, so a report counts no writer that merely exited.
type Status string

// A writer's statuses, in the words state.json, tare workshop inspect and the report use.
const (
	StatusPrepared  Status = "prepared"
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
)
