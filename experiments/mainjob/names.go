package mainjob

// ConfigNames are the Configs' names in the report's column order: the order lab compare
// takes a folder of the job's runs in.
func ConfigNames() []string {
	names := make([]string, len(Configs))
	for i, c := range Configs {
		names[i] = c.Name
	}
	return names
}
