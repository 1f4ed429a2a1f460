"""The OpenAI model the settings name unless OPENAI_MODEL does (functions/answer/settings.py):
a leaf, so that the settings import none of the OpenAI modules. OpenAI's recommended
replacement for gpt-5-mini, no shutdown announced
(https://developers.openai.com/api/docs/models/gpt-6.1-terra); the model table with every
announced shutdown is functions/answer/openai_models.py."""

DEFAULT_MODEL = "gpt-6.1-terra"
