// Package serve is the interactive teaching control plane behind `lab serve`: one ADS
// front end (SotW or delta, experiments/controlplane) publishing the teaching state, a
// command loop that reads state changes from stdin and publishes each as the next
// version, a console that prints one line per event that matters (read from the xds.log
// recorder), a NACK-storm watch, `status` in text and JSON, and, on request, the teaching
// setup beside it: Envoy (experiments/envoy) or grpc-go's client (experiments/grpcclient)
// and the inventory backends (experiments/inventory).
//
// cmd/lab's serve command parses its flags into Options and calls Run; Run refuses a bad
// option with an *option.Error naming it (the Option* constants) before anything starts,
// and cmd/lab words that refusal as its flag. lab tap reads its commands with EachLine
// and names its steps with UniqueStep, as serve does.
package serve
