package state

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestExitStatusText(t *testing.T) {
	at := time.Unix(1716517000, 500000000)
	for _, tc := range []struct {
		name             string
		x                ExitStatus
		text, how, short string
		json             string
	}{
		{"exit 0", ExitStatus{Code: 0, At: at}, "pid 4242 exited with status 0", "exited with status 0", "exit 0", `{"code":0,"signal":null,"at":1716517000.5}`},
		{"exit 3", ExitStatus{Code: 3, At: at}, "pid 4242 exited with status 3", "exited with status 3", "exit 3", `{"code":3,"signal":null,"at":1716517000.5}`},
		{"sigkill", ExitStatus{Signal: 9, At: at}, "pid 4242 was killed by SIGKILL", "was killed by SIGKILL", "SIGKILL", `{"code":null,"signal":"SIGKILL","at":1716517000.5}`},
		{"realtime", ExitStatus{Signal: 40, At: at}, "pid 4242 was killed by SIG40", "was killed by SIG40", "SIG40", `{"code":null,"signal":"SIG40","at":1716517000.5}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.x.Text(4242); got != tc.text {
				t.Errorf("Text = %q, want %q", got, tc.text)
			}
			if got := tc.x.How(); got != tc.how {
				t.Errorf("How = %q, want %q", got, tc.how)
			}
			if got := tc.x.Short(); got != tc.short {
				t.Errorf("Short = %q, want %q", got, tc.short)
			}
			b, err := json.Marshal(tc.x)
			if err != nil || string(b) != tc.json {
				t.Fatalf("Marshal = %s, %v; want %s", b, err, tc.json)
			}
			var back ExitStatus
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Code != tc.x.Code || back.Signal != tc.x.Signal || !back.At.Equal(tc.x.At) {
				t.Errorf("round trip = %+v, want %+v", back, tc.x)
			}
		})
	}
}

func TestExitStatusBadJSON(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"code":1,"signal":"SIGKILL","at":1}`, "exactly one of code and signal"},
		{`{"code":null,"signal":null,"at":1}`, "exactly one of code and signal"},
		{`{"signal":"SIGNOPE","at":1}`, `signal "SIGNOPE": not a signal name`},
		{`{"signal":"SIG0","at":1}`, `signal "SIG0": not a signal name`},
		{`{"code":"three"}`, "exit_status: json"},
	} {
		var x ExitStatus
		err := json.Unmarshal([]byte(tc.doc), &x)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to say %q", tc.doc, err, tc.want)
		}
	}
}

func TestParseSignalNames(t *testing.T) {
	for n := 1; n < len(signalNames); n++ {
		got, err := ParseSignal(SignalName(n))
		if err != nil || got != n {
			t.Errorf("ParseSignal(SignalName(%d)) = %d, %v", n, got, err)
		}
	}
}
