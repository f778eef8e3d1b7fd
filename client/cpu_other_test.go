//go:build !unix

package client

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
