package main

func benchServer(config) {}
