"""What the engine serves over HTTP besides the AWS APIs: REST APIs as API Gateway serves them
(``rest_apis``: their model, ``mapping_templates``, ``integrations``, the ``server``), and the
access policy every loopback endpoint applies (``request_guard``)."""
