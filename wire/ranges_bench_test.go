package wire

import (
	"bytes"
	"testing"
	"time"
)

// BenchmarkDecodeRegister measures what the range check adds to decoding
// a registration: "checked" is DecodeAt, "unchecked" the same decoding
// without it, in the same run (compare the two, not absolute numbers).
func BenchmarkDecodeRegister(b *testing.B) {
	doc := []byte(`{"type":"session","id":"s-42","label":"reviewer for PR 1064","lifecycle":"running","pid":4242,"pid_start_time":1716517000.12,
		"supervisor_pid":4200,"heartbeat_file":"/run/agents/s-42.hb","timeout_seconds":900,"artifacts_root":"/srv/runs/s-42",
		"artifacts":[{"path":"review.md","required":true,"min_bytes":1,"kind":"file","newer_than_start":true}],
		"lock_files":["/srv/runs/s-42/.lock"],"parent":{"type":"play","id":"p-1"},"depends_on":["p-0"],
		"schedule":{"cron":"*/5 * * * *","last_fired_at":1716517000.0},"metadata":{"k":"v"}}`)
	now := time.Now()
	b.Run("checked", func(b *testing.B) {
		for range b.N {
			var r Register
			if err := DecodeAt(bytes.NewReader(doc), &r, false, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unchecked", func(b *testing.B) {
		for range b.N {
			var r Register
			if err := decode(bytes.NewReader(doc), &r, false, func([]byte) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
