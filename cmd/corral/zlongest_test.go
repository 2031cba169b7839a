package main

import "testing"

// The package's longest tests, declared here so that they start first.
//
// This file's name sorts last on purpose. go test pauses every parallel test
// until the serial ones are done, then lets them go all at once, and the
// runtime happens to run them last declared first (the package's first one
// excepted). A test of 20 s that starts in the phase's tail ends the package
// 10–15 s later than one that starts at its head; the rest pack around it.
// Declared in their own files, these started anywhere in the phase.
//
// The order has no effect on what a test checks, only on when it runs; should
// the runtime change, the package is as slow as before, not wrong. Longest
// last. The bodies stay beside their kin.

func TestFleetEverywhere(t *testing.T)              { fleetEverywhere(t) }
func TestFleetTerminalBoardAttach(t *testing.T)     { fleetTerminalBoardAttach(t) }
func TestWebBoardAtTwoHundred(t *testing.T)         { webBoardAtTwoHundred(t) }
func TestVerifyFakeAgent(t *testing.T)              { verifyFakeAgent(t) }
func TestFleetHubClusterSurvivesAKill(t *testing.T) { fleetHubClusterSurvivesAKill(t) }
