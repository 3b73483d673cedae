app_name = "policy_api"
urlpatterns: list = []
