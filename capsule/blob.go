package capsule

// ReadBlob returns the content of the file whose blob is hash, when it is at most limit
// bytes: the app shows a tail's changes from the store, never from a workspace an agent
// could still be writing. The blob is opened below the store, never through a symlink.
func (s *Store) ReadBlob(hash string, limit int64) ([]byte, error) {
	if len(hash) < 3 {
		return nil, errBadHash(hash)
	}
	return readRegular(s.root, objectRel("blobs", hash), limit)
}

type errBadHash string

func (e errBadHash) Error() string {
	return "blob hash " + string(e) + " is not a sha256: run `tare verify`"
}
