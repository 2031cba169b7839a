package fleet

import "testing"

// The package's longest tests, declared here so that they start first: go
// test lets the paused parallel tests go last declared first, and a hub
// cluster of 20 s started in the tail of the package's run held it 5–7 s
// longer. cmd/corral/zlongest_test.go says more. Longest last.

func TestObserveOnlyTakesJobsOnlyWhenInvited(t *testing.T) { observeOnlyTakesJobsOnlyWhenInvited(t) }
func TestHostsComeAndGo(t *testing.T)                      { hostsComeAndGo(t) }
func TestEventsResumeAfterHubRestart(t *testing.T)         { hubRestartsUnderEvents(t) }
func TestClusterLosesANode(t *testing.T)                   { clusterLosesANode(t) }
func TestRefusedCredentialSharedLater(t *testing.T)        { refusedCredentialSharedLater(t) }
func TestAuthBucketFollowsTheFleetsCopies(t *testing.T)    { authBucketFollowsTheFleetsCopies(t) }
func TestHubClusterJoinHub(t *testing.T)                   { hubClusterJoinHub(t) }
