//go:build !linux

package probe

import (
	"errors"
	"os"
)

// Without openat2 every root goes through os.Root (see confine.go); the
// functions below are never reached.

var errNoBeneath = errors.New("openat2 is Linux only")

func beneathSupported() bool { return false }

func openBeneathRoot(string, *scratch) (int, error) { return -1, errNoBeneath }

func closeFD(int) {}

func (r *rootFS) lstatBeneath(string, *fileEntry) error { return errNoBeneath }

func (r *rootFS) statBeneath(string, *fileEntry) error { return errNoBeneath }

func (r *rootFS) openReadBeneath(string) (*os.File, error) { return nil, errNoBeneath }

func (r *rootFS) openDirBeneath(string) (dirHandle, error) { return dirHandle{fd: -1}, errNoBeneath }

func (d *dirHandle) namesBeneath(func(string) bool) error { return errNoBeneath }

func (d *dirHandle) lstatBeneath(string, *fileEntry) error { return errNoBeneath }
