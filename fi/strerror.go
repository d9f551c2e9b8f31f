package fi

// strerror is replaced by the generated table.
func strerror(e Errno) string { return "errno" }
