"""Screens of the app: main view, prompt view, help, save dialog."""
