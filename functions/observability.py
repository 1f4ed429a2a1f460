"""One Logger and Tracer for the service; every handler uses these."""

from aws_lambda_powertools import Logger, Tracer

SERVICE = "burst-reply"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
