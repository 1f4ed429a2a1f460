"""The image errors of OpenAI's Responses API: an image OpenAI will not read fails the request
whatever attempt sends it, and the request may be made again without its images
(functions/answer/ai_requests.py). The codes of a Response's `error` (openai-python's
types/responses/response_error.py); a leaf, apart from functions/answer/openai_responses.py."""

IMAGE_ERRORS = {
    "invalid_image",
    "invalid_image_format",
    "invalid_base64_image",
    "invalid_image_url",
    "image_too_large",
    "image_too_small",
    "image_parse_error",
    "image_content_policy_violation",
    "invalid_image_mode",
    "image_file_too_large",
    "unsupported_image_media_type",
    "empty_image_file",
    "failed_to_download_image",
    "image_file_not_found",
}
