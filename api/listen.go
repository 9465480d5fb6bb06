package api

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// CheckListen refuses to serve the API on a non-loopback address without
// a token, that is with auth: none (SPEC §9): every mutating endpoint
// would be open to the network. config.Validate refuses the same; this is
// the daemon's own last check. A loopback IP or "localhost" is loopback; an empty host (all
// interfaces) and any other name are not, since a name may resolve
// anywhere. It also refuses an address that is not host:port.
func CheckListen(addr string, tokenSet bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %q: not host:port: %w", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("listen %q: the port must be a number from 0 to 65535", addr)
	}
	if tokenSet || IsLoopback(host) {
		return nil
	}
	return fmt.Errorf("listen %q: not a loopback address, so auth must not be none: remove auth: none (the daemon then makes its own token) or set auth.token_file, or listen on 127.0.0.1", addr)
}

// IsLoopback reports whether host is a loopback IP or "localhost".
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
