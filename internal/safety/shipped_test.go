package safety

import "os"

func readShipped() ([]byte, error) { return os.ReadFile("production-denylist.txt") }
