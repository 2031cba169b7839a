package combine

import "testing"

func TestDecide(t *testing.T) {
	blockedScreen := Screen{State: Blocked, Kind: "permission", Rule: "permission", Message: "proceed"}
	workingScreen := Screen{State: Working, Rule: "working"}
	idleScreen := Screen{State: Idle, Rule: "idle"}
	report := func(s State) Report { return Report{Present: true, Source: SourceOSC7501, State: s} }
	tests := []struct {
		name string
		in   Inputs
		want Decision
	}{
		{"nothing: idle by default, never blocked", Inputs{}, Decision{State: Idle, Source: SourceDefault}},
		{"screen working", Inputs{Screen: workingScreen}, Decision{State: Working, Source: SourceScreen, Rule: "working"}},
		{"screen idle rule", Inputs{Screen: idleScreen}, Decision{State: Idle, Source: SourceScreen, Rule: "idle"}},
		{"screen prompt beats a working report", Inputs{Screen: blockedScreen, Report: report(Working)},
			Decision{State: Blocked, Kind: "permission", Message: "proceed", Source: SourceScreen, Rule: "permission"}},
		{"screen prompt takes the report's words", Inputs{Screen: blockedScreen, Report: Report{Present: true, Source: SourceOSC7501, State: Blocked, Kind: "permission", Message: "approve Bash: ls"}},
			Decision{State: Blocked, Kind: "permission", Message: "approve Bash: ls", Source: SourceScreen, Rule: "permission"}},
		{"report beats screen working", Inputs{Screen: workingScreen, Report: report(Done)}, Decision{State: Done, Source: SourceOSC7501}},
		{"report blocked without a screen prompt", Inputs{Screen: idleScreen, Report: Report{Present: true, Source: SourceHook, State: Blocked, Kind: "question", Message: "pick"}},
			Decision{State: Blocked, Kind: "question", Message: "pick", Source: SourceHook}},
		{"kind only with blocked", Inputs{Report: Report{Present: true, Source: SourceOSC7501, State: Working, Kind: "question"}}, Decision{State: Working, Source: SourceOSC7501}},
		{"report beats process", Inputs{Report: report(Error), Process: Process{AgentExited: true}}, Decision{State: Error, Source: SourceOSC7501}},
		{"agent exited beats screen working", Inputs{Screen: workingScreen, Process: Process{AgentExited: true}}, Decision{State: Idle, Source: SourceProcess}},
		{"pane exited beats everything", Inputs{Screen: blockedScreen, Report: report(Working), Process: Process{PaneExited: true, ExitCode: 3}},
			Decision{State: Exited, Source: SourceProcess, ExitCode: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.in); got != tt.want {
				t.Fatalf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestChanged(t *testing.T) {
	a := Decision{State: Blocked, Kind: "permission", Message: "run ls"}
	tests := []struct {
		name string
		b    Decision
		want bool
	}{
		{"same", a, false},
		{"source alone is not a change", Decision{State: Blocked, Kind: "permission", Message: "run ls", Source: SourceOSC7501}, false},
		{"new prompt while blocked", Decision{State: Blocked, Kind: "permission", Message: "run rm"}, true},
		{"kind", Decision{State: Blocked, Kind: "question", Message: "run ls"}, true},
		{"state", Decision{State: Working}, true},
	}
	for _, tt := range tests {
		if got := Changed(a, tt.b); got != tt.want {
			t.Errorf("%s: Changed = %v, want %v", tt.name, got, tt.want)
		}
	}
	if Changed(Decision{State: Working, Message: "x"}, Decision{State: Working, Message: "y"}) {
		t.Error("a working message change is not an event")
	}
}
