"""The HTML pages: conversations and their turns, history, exports, and the account's
own pages (login, API token, language); forms that work without JavaScript."""
