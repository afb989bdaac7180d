// Package batch schedules a batch command's work over many sessions:
// reading and compacting ahead on goroutines of its own, bounded in
// sessions and in size, while the caller commits the results in order.
// It knows nothing of the store or the model; it imports the standard
// library only.
package batch
