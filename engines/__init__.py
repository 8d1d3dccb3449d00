"""HAI Studio engines: every algorithm, model, storage layer and job behind the app.

Nothing under ``engines/`` imports Streamlit; pages and studies call into it.
"""
