//go:build !unix

package main

import "os"

// peakRSS is not reported where the platform has no rusage.
func peakRSS(*os.ProcessState) int64 { return 0 }
