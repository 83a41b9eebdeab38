// Command main stands for a consumer's main in the construct's tests of
// ConsumerProps.Main: they build it and read its build information.
package main

func main() {}
