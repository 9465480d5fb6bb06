package target

import "testing"

func TestChoiceRemote(t *testing.T) {
	for _, c := range []struct {
		name    string
		choice  Choice
		remote  bool
		wantErr bool
	}{
		{"no server", Choice{EnvDB: true, DBFlag: true}, false, false},
		{"server flag", Choice{Server: "http://127.0.0.1:9715", ServerFlag: true}, true, false},
		{"bare host:port", Choice{Server: "127.0.0.1:9715", ServerFlag: true}, true, false},
		{"both flags", Choice{Server: "http://h:1", DBFlag: true, ServerFlag: true}, false, true},
		{"db flag beats env server", Choice{Server: "http://h:1", DBFlag: true}, false, false},
		{"server flag beats env db", Choice{Server: "http://h:1", ServerFlag: true, EnvDB: true}, true, false},
		{"both in env", Choice{Server: "http://h:1", EnvDB: true}, false, true},
		{"not a URL", Choice{Server: "ftp://h:1"}, false, true},
		// --config names the daemon's local database, as --db does.
		{"config beats env server", Choice{Server: "http://h:1", ConfigFlag: true}, false, false},
		{"config with server flag", Choice{Server: "http://h:1", ServerFlag: true, ConfigFlag: true}, false, true},
		{"config, no server", Choice{ConfigFlag: true}, false, false},
	} {
		remote, err := c.choice.Remote()
		if remote != c.remote || (err != nil) != c.wantErr {
			t.Errorf("%s: Remote() = %v, %v; want %v, error %v", c.name, remote, err, c.remote, c.wantErr)
		}
	}
}
