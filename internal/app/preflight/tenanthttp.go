package preflight

import (
	"net/http"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// TenantHTTP is the HTTP client of every kintone client the command line builds: it counts
// each request on the counter of the request's context (a scenario's, when the cleanup or
// the evidence reader sends it for one), else on c (the run's: the live preflight's probes).
func TenantHTTP(caFile string, c *apicount.Counter) (*http.Client, error) {
	hc, err := kintoneapi.HTTPClientWithCA(caFile)
	if err != nil {
		return nil, err
	}
	hc.Transport = apicount.Transport(hc.Transport, c, nil)
	return hc, nil
}
